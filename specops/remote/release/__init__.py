"""The host-side release script: list, push session, receive, switch, prune, rollback, bad marks; the guard's file
adds the guard and its watch after "verified"."""
