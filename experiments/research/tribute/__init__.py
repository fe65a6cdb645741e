"""The tribute research: counterfactual values of every ask and give-back on cloned states,
and the policy's tribute fitted to them (:mod:`.fit`, its command line, with its parts
:mod:`.settings`, :mod:`.gather`, :mod:`.data`, :mod:`.model` and :mod:`.report`), and the
headroom of a tribute table fitted to them (:mod:`.headroom`, with its agent
:class:`~.headroom.TableTribute`)."""
