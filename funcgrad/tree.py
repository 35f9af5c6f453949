"""funcgrad.tree: pytrees (nested containers of tensors), backed by optree."""
