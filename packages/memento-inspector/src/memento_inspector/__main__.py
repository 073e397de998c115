from memento_inspector.cli import main

raise SystemExit(main())
