"""tessera.torch: the torch.compile front end (backend="tessera") and explain().

docs/torch.md describes the pipeline, the supported ops and the fallback rules.
"""

from .backend import tessera_backend, wait_tier_up
from .explain import Explanation, explain

__all__ = ["tessera_backend", "wait_tier_up", "explain", "Explanation"]
