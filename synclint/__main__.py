from synclint.cli import main

raise SystemExit(main())
