"""Calibration tooling of decontamination (disguised copies, negatives, paraphrases, metrics): used by tests and
benchmarks only; the runtime (stage, index, report, flows) never imports it."""
