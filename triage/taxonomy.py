"""Stable pitfall ids (mirror of ../shared/domain/taxonomy.md; new ids only with a pattern file and a note)."""
IDS = (
    # CUDA graph configuration pitfalls (reference card)
    "te-rng-tracker-missing", "full-iteration-nan-check", "full-iteration-requires-local",
    "moe-scope-conflict", "moe-preprocess-without-router", "dropless-moe-scope",
    "capture-memory-overhead", "delay-wgrad-constraints", "dynamic-shapes", "graph-cleanup-missing",
    "nccl-graph-register-expandable", "cpu-offload-incompatible", "moe-recompute-router-scope",
    "full-recompute-needs-full-iteration", "graph-no-speedup",
    # generic capture / runtime signatures
    "capture-sync-forbidden", "capture-default-stream", "illegal-memory-access",
    "nccl-watchdog-timeout", "nccl-error", "cuda-oom",
    # added after reading megatron-core 0.16.1
    "scope-not-in-model", "invalid-graph-option", "deprecated-graph-flags", "graph-dropout-recompute",
    "moe-preprocess-dtoh", "ep-overlap-graph-scope", "step-time-regression", "recompute-graph-conflict",
    "te-required", "inference-graph-unsupported", "graph-runner-misuse",
    # added through its pattern file (patterns/nccl-watchdog-hang.yaml says why)
    "nccl-watchdog-hang",
    # added through its pattern file (patterns/gloo-collective-timeout.yaml says why)
    "gloo-collective-timeout",
    # added through its pattern file (patterns/gpu-hardware-fault.yaml says why)
    "gpu-hardware-fault",
    # added through its pattern file (patterns/vllm-custom-allreduce-expandable.yaml says why)
    "vllm-custom-allreduce-expandable",
    # added through its pattern file (patterns/compiled-graph-output-overwritten.yaml says why)
    "compiled-graph-output-overwritten",
    # added through its pattern file (patterns/compiled-graph-static-input-moved.yaml says why)
    "compiled-graph-static-input-moved",
)
