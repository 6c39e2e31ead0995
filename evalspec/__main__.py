"""`python -m evalspec`: the same command as `evalspec`.

`python -m` puts the working directory first on `sys.path`. In review that is a pull request's
checkout, where a module or a `*.dist-info` folder naming an `evalspec.plugins` entry point would
be imported as if installed; so that entry goes before anything else is imported. (A folder named
`evalspec` there is imported by Python itself before this file runs: CI runs the `evalspec`
command, whose `sys.path` starts at its own bin folder.)
"""

import os
import sys

if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.curdir):
    del sys.path[0]

from evalspec._cli import main

main()
