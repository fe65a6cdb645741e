"""What every room of :mod:`dragons_egg.experiments` shares (room ``common``, the bottom one):
argument types (:mod:`.args`), settings dataclasses read from files and command lines
(:mod:`.settings`), and run folders: claiming one, resuming, Ctrl-C, the evaluation CSV and
the learning curve (:mod:`.runs`). It imports no other room."""
