"""Stand-ins for a model: the offline model, fault and latency simulation, protocol emulators."""
