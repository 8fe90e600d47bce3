"""Paper reproductions and audit targets: the top layer, which may import every other."""
