"""Private backtracking line search (Chen & Lee 2020) and its baselines."""
