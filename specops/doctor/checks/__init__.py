"""Importing this package registers every check (order here = order in the output)."""

from specops.doctor.checks import (  # noqa: F401, I001 (import order = output order)
    system,
    gpu_nvml,
    gpu,
    gpu_health,
    gpu_modes,
    cuda,
    torchcodec,
    native,
    sglang,
    server_args,
    model_files,
    host_resources,
    service_user,
    root_paths,
    gpu_xid,
)
