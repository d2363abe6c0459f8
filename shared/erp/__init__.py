"""The demo ERP: schema, deterministic seed, database handle."""
