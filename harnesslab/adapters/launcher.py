"""The light launcher of a program served by the zygote (adapters.zygote): ``python -S -I
.../harnesslab/adapters/launcher.py MODULE`` (``zygote.command``) starts ``MODULE``'s ``main``
from a worker, without site, or else becomes ``python -m MODULE``."""

import os
import sys

if __name__ == "__main__":
    if len(sys.argv) != 2:  # the worker runs MODULE's main as it is: no arguments to pass on
        sys.stderr.write("usage: python -S -I launcher.py MODULE (a module with a main())\n")
        sys.exit(2)
    # Without site, zygote.py is loaded from beside this file, not as harnesslab's (the
    # package's import is a tenth of this start; the zygote is keyed by the folder both name).
    # A file run as a script is compiled on every start: this one stays small, and zygote's
    # bytecode is cached. The folder leaves the path again: its modules are no one else's.
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from harnesslab.adapters import zygote
    else:
        import zygote

    del sys.path[0]
    zygote.launch(sys.argv[1])
    # No zygote serves it (off, or not Linux): the program with site, as ``python -m`` runs it.
    os.execv(sys.executable, [sys.executable, "-m", *sys.argv[1:]])
