"""kfuse.torch: PyTorch front ends over kfuse's fused kernels.

    import kfuse.torch
    opt = kfuse.torch.optim.AdamW(model.parameters(), lr=1e-3)

kfuse.torch.optim holds torch.optim drop-ins (AdamW, Adam, SGD, Adagrad,
RMSprop, Lion), Apex's FusedLAMB and FusedNovoGrad, timm's Lars, and
optimizer_from_ir(), which makes one from any update in the dialect.

kfuse.torch.nn holds LayerNorm and RMSNorm (nn.LayerNorm / nn.RMSNorm
drop-ins over the fused norm kernels, autograd included), the functional
layer_norm() and rms_norm(), and replace_norms(model), which converts a
model's norms in place: torch's and those of the common Hugging Face
families (register_norm() adds more). Unlike the rest of kfuse, this package needs
PyTorch at import.
"""

try:
    import torch as _torch  # noqa: F401
except ImportError as error:
    raise ImportError(
        f"kfuse.torch needs PyTorch, and 'import torch' failed ({error}); "
        "install torch with CUDA support, or use kfuse's torch-free API "
        "(kfuse.Update, kfuse.multi_tensor)") from error

from . import nn, optim  # noqa: E402
from .nn import LayerNorm, RMSNorm, register_norm, replace_norms  # noqa: E402
from .optim import SGD, Adagrad, Adam, AdamW, KfuseOptimizer  # noqa: E402
from .optim import Lion, RMSprop  # noqa: E402
from .optim import optimizer_from_ir  # noqa: E402

__all__ = ["optim", "AdamW", "Adam", "SGD", "Adagrad", "RMSprop", "Lion",
           "KfuseOptimizer",
           "optimizer_from_ir", "nn", "LayerNorm", "RMSNorm",
           "replace_norms", "register_norm"]
