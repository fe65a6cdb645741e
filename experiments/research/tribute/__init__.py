"""The tribute research: counterfactual values of every ask and give-back on cloned states
(:mod:`.fit`) and the headroom of a tribute table fitted to them (:mod:`.headroom`, with its
agent :class:`~.headroom.TableTribute`)."""
