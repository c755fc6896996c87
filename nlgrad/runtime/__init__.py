"""What runs: modules, programs, traces and executors."""
