#!/bin/bash
# PID 1 of a fresh specops test host, before systemd: build the root file system and the API
# file systems inside the new mount namespace, wait for the harness to plug the network in, then
# pivot into the new root and become systemd. Started by lifecycle.py through `unshare`; not for
# hand use.
#
# Environment: STH_NAME, STH_LOWER, STH_UPPER, STH_WORK, STH_ROOT (the overlay mount point),
# STH_GO_FD: read end of a pipe; the harness writes "go" once the veth is inside. EOF instead of
# "go" means the harness died, so the host must not boot.
set -euo pipefail
: "${STH_NAME:?}" "${STH_LOWER:?}" "${STH_UPPER:?}" "${STH_WORK:?}" "${STH_ROOT:?}" "${STH_GO_FD:?}"
NEW=$STH_ROOT

say() { echo "pid1[$STH_NAME]: $*" >&2; }

mount_root() {
    # nothing mounted from here on may propagate to the outer machine
    mount --make-rprivate /
    mount -t overlay "sth-$STH_NAME" \
        -o "lowerdir=$STH_LOWER,upperdir=$STH_UPPER,workdir=$STH_WORK" "$NEW"
}

mount_proc_and_sys() {
    mount -t proc -o nosuid,nodev,noexec proc "$NEW/proc"
    # /proc/sys read-only, so the host's systemd cannot change the outer kernel's settings;
    # /proc/sys/net belongs to the host's own netns and stays writable
    mount --bind "$NEW/proc/sys/net" "$NEW/proc/sys/net"
    mount --rbind "$NEW/proc/sys" "$NEW/proc/sys"
    mount -o remount,bind,ro "$NEW/proc/sys"
    if [ -e "$NEW/proc/sysrq-trigger" ]; then
        mount --bind /dev/null "$NEW/proc/sysrq-trigger"
    fi
    # read-only sysfs of the host's netns: udev and friends skip themselves
    mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$NEW/sys"
    # we are inside the cgroup namespace rooted at the host's own cgroup: systemd gets a
    # private unified tree and cannot touch the other hosts' units
    mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$NEW/sys/fs/cgroup"
}

mount_dev() {
    local dev=$NEW/dev node n major minor
    mount -t tmpfs -o mode=755,nosuid,size=4m devtmp "$dev"
    for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
        IFS=: read -r n major minor <<<"$node"
        mknod -m 666 "$dev/$n" c "$major" "$minor"
    done
    mkdir "$dev/pts" "$dev/shm" "$dev/mqueue"
    mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5,nosuid,noexec devpts "$dev/pts"
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$dev/shm"
    mount -t mqueue -o nosuid,nodev,noexec mqueue "$dev/mqueue"
    ln -s pts/ptmx "$dev/ptmx"
    ln -s /proc/self/fd "$dev/fd"
    ln -s /proc/self/fd/0 "$dev/stdin"
    ln -s /proc/self/fd/1 "$dev/stdout"
    ln -s /proc/self/fd/2 "$dev/stderr"
}

mount_scratch() {
    # fresh /run and /tmp; the tmpfs on /tmp also hides the outer /tmp with all hosts' state
    mount -t tmpfs -o mode=755,nosuid,nodev,size=64m run "$NEW/run"
    mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$NEW/tmp"
}

new_boot_id() {
    # a new boot id at every boot, as a real reboot (and systemd-nspawn) gives: records that name the boot
    # they were written in tell a reboot from a restart
    cat /proc/sys/kernel/random/uuid >"$NEW/run/.specops-testhost-boot-id"
    mount --bind "$NEW/run/.specops-testhost-boot-id" "$NEW/proc/sys/kernel/random/boot_id"
}

wait_for_network() {
    local word=""
    read -r word <&"$STH_GO_FD" || true
    exec {STH_GO_FD}<&-
    [ "$word" = go ] || { say "harness went away before go; not booting"; exit 1; }
}

become_systemd() {
    cd "$NEW"
    pivot_root . .
    umount -l .
    cd /
    hostname "$STH_NAME"
    # a real host has a large hard NOFILE limit; raising it needs CAP_SYS_RESOURCE, which some
    # sandboxes lack (hard limit 20000 there): keep going without it
    ulimit -Hn 524288 2>/dev/null || true
    ulimit -Sn 1024
    # drop what acts on the whole machine (modules, clock, raw I/O...), as systemd-nspawn does
    exec setpriv \
        --bounding-set -sys_module,-sys_time,-sys_rawio,-wake_alarm,-mac_admin,-mac_override,-syslog,-block_suspend,-sys_pacct \
        env -i container=specops-testhost \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /lib/systemd/systemd --system --unit=specops-testhost.target
}

mount_root
mount_proc_and_sys
mount_dev
mount_scratch
new_boot_id
wait_for_network
become_systemd
