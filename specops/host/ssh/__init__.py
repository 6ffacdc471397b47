"""The SSH transport: OpenSSH's behaviour (~/.ssh/config, known_hosts, keys, bastions) on top of paramiko.

connection.py connects (`connect(spec)` gives an SshHost), auth.py hands it the keys, channels.py (SshHost) runs
commands and tunnels on the connection: the three modules here that import paramiko. Everything else is pure,
so it is tested without a network and loads without paramiko (`specops hosts` resolves targets without it):
config.py reads ~/.ssh/config, resolve.py turns an inventory `ssh` value into an SshTarget (target.py) with its
hops, known_hosts.py, host_certs.py, krl.py, revoked.py and hostkeys.py decide on a host key, keyorder.py and
passphrase.py on the keys to offer, proxycommand.py runs a ProxyCommand, shared.py shares a jump host's
connection, prestart.py hands over commands started early, errors.py words every failure, and paramiko_import.py
imports paramiko without what it would load for nothing.

This file imports nothing: import the module you need.
"""
