"""The browser room (``dragons-egg serve``, ``dragons-egg replay FILE --html``): a replay viewer,
a page to play the bots, and a tournament's report and a training run's learning curve, served
by Starlette from one folder (docs/watching.md).

- :mod:`.frames`: what is drawn, built in Python from the engine states a replay reproduces
  (the all-hands view) and from each seat's observation (its view);
- :mod:`.game`: a match against the bots held by the server, whose payloads hold only the
  human's observation, its legal moves, the hints and public facts;
- :mod:`.app`: the pages and routes; :mod:`.paths`: the served folder, which no path escapes;
- :mod:`.pages`, :mod:`.runs`: the HTML (the colours of :mod:`dragons_egg_env.render_image`);
- :mod:`.serve`: the command line and the single-file replay.

Needs the ``web`` extra (``pip install 'dragons-egg[web]'``) for the server; the single-file
replay needs only the core.
"""
