"""tessera.torch: the torch.compile front end (backend="tessera") and explain().

docs/torch.md describes the pipeline, the supported ops and the fallback rules.
"""

from .backend import tessera_backend
from .explain import Explanation, explain

__all__ = ["tessera_backend", "explain", "Explanation"]
