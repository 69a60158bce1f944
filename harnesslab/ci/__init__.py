"""CI suites: the pytest plugin (the only pytest importer), its configuration, gate and baselines."""
