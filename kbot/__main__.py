from kbot.cli import main

raise SystemExit(main())
