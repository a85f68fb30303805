"""``python -m powerzoojax``: the training command line of pzj-rl (see ``powerzoojax.rl.training._cli``)."""

from powerzoojax.rl.training._cli import main

raise SystemExit(main())
