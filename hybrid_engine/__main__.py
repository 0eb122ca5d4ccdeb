from hybrid_engine.cli import main

raise SystemExit(main())
