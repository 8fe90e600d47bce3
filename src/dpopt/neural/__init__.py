"""Private training of PyTorch networks (extra ``dpopt[torch]``): DP-SGD, DP-Adam, DP-BLSGD.

chen2020 §5.7 on the shared privacy core: clipped per-example gradients by ghost
norms and book-keeping (:mod:`.persample`), a ``torch.nn.Module`` behind the line
search's private-model contract (:mod:`.model`), the three methods at equal
per-iteration Rényi DP (:mod:`.methods`) and the :func:`train` face; the §5.7 MLP and CNN
(:mod:`.networks`) and the non-private Adam reference (:mod:`.reference`).  This
package is the only place besides :mod:`dpopt.privacy.torch_noise` that imports torch.
"""

from .._validation import install_hint

try:
    import torch  # noqa: F401
except ModuleNotFoundError as exc:  # named, so that the dpopt command reports it in one line
    raise ModuleNotFoundError(f"dpopt.neural {install_hint(['torch'])}", name="torch") from exc

from .methods import METHODS, NeuralHyper
from .model import LOSSES, TorchModel
from .persample import PerSampleGradients, check_module
from .train import Trained, train

__all__ = ["train", "Trained", "TorchModel", "PerSampleGradients", "check_module", "NeuralHyper", "METHODS",
           "LOSSES"]
