"""Built-in benchmarks (installed as ``nlgrad.benchmarks``). Ids are ``family/variant``; see README.md here."""

CATALOG: dict[str, str] = {
    "twx": "nlgrad.benchmarks.twx:TextWorldExpressBenchmark",
    "sciworld": "nlgrad.benchmarks.sciworld:ScienceWorldBenchmark",
    "hotpotqa": "nlgrad.benchmarks.hotpotqa:HotpotQABenchmark",
    "hover": "nlgrad.benchmarks.hover:HoverBenchmark",
    "locomo": "nlgrad.benchmarks.locomo:LocomoBenchmark",
    "ifbench": "nlgrad.benchmarks.ifbench:IFBenchBenchmark",
    "ifeval": "nlgrad.benchmarks.ifeval:IFEvalBenchmark",
    "tau2": "nlgrad.benchmarks.tau2:Tau2Benchmark",
    "banking77": "nlgrad.benchmarks.banking77:Banking77Benchmark",
    "clinc150": "nlgrad.benchmarks.clinc150:Clinc150Benchmark",
}
