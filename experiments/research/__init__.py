"""Research that builds on training and evaluation (room ``research``): one subpackage per
question, such as :mod:`.tribute` (the counterfactual tribute fit and its headroom)."""
