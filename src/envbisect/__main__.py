from envbisect.cli import main

raise SystemExit(main())
