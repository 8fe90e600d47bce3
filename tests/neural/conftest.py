import torch

# One intra-op thread: the test machine's cores are shared, and tiny networks gain nothing from more.
torch.set_num_threads(1)
