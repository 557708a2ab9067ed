"""Proposers turn a problem plus feedback into candidate sources (see `kbot.propose.base`)."""
