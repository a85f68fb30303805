"""``python -m powerzoojax``: the training command line of pzj-rl (see ``powerzoojax.rl._cli``)."""

from powerzoojax.rl._cli import main

raise SystemExit(main())
