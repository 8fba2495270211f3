from envbisect.cli.main import main

raise SystemExit(main())
