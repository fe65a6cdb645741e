"""The ``dragons-egg`` command line (room ``cli``, the top one): the command and its
subcommands (:mod:`.main`), playing and replaying in the terminal (:mod:`.play`), GIFs of
replays (:mod:`.gif`) and the main job (:mod:`.main_job`). It may import every other room;
nothing imports it."""
