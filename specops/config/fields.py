"""Constrained string types for values that end up in a shell command or a systemd unit.

An inventory value travels into `ssh` argv, into ExecStart= and into an EnvironmentFile. Quoting handles
ordinary content, but some content has no safe spelling in one of those places (a newline ends a unit
directive, a NUL truncates a C string, `%` and `$` are systemd specifiers). Rejecting such values when the
config is loaded is the only way to guarantee nothing is injected later, so every field uses one of these.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from specops.config.values import (
    abs_path,
    dist_address,
    env_name,
    gpu_list,
    interface_names,
    jump_hosts,
    listen_address,
    local_path,
    model_ref,
    no_control,
    posix_name,
    service_name,
    ssh_target,
    valid_name,
)

PlainText = Annotated[str, AfterValidator(no_control)]
Name = Annotated[str, AfterValidator(valid_name)]
ServiceName = Annotated[str, AfterValidator(service_name)]
AbsPath = Annotated[str, AfterValidator(abs_path)]
ModelRef = Annotated[str, AfterValidator(model_ref)]
LocalPath = Annotated[str, AfterValidator(local_path)]
EnvName = Annotated[str, AfterValidator(env_name)]
SshTarget = Annotated[str, AfterValidator(ssh_target)]
JumpHosts = Annotated[str, AfterValidator(jump_hosts)]
GpuList = Annotated[str, AfterValidator(gpu_list)]
ListenAddress = Annotated[str, AfterValidator(listen_address)]
PosixName = Annotated[str, AfterValidator(posix_name)]
DistAddress = Annotated[str, AfterValidator(dist_address)]
InterfaceNames = Annotated[str, AfterValidator(interface_names)]
