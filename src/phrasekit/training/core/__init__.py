"""What every training method shares: the one loop (``trainer``), its checkpoints
(``checkpoint``), the losses (``losses``), weight averaging with the initial model
(``averaging``) and its cliff guard (``cliff_guard``), and the settings
checks and fingerprints (``config``, no torch)."""
