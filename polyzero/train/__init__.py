"""polyzero.train: the training runtime (drivers, learner, checkpoints; the replays are polyzero.replay).

`polyzero.train(...)` is also the Python API's training call (`polyzero.api.train`):
once any of this package's modules is imported, Python binds the name
`polyzero.train` to this package, so the package itself is made callable and
hands the call on.
"""

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from ..api import train

        return train(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
