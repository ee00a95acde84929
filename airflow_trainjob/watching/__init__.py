"""Keeping up with the cluster: the synchronous wait's watches, the triggerer's shared stream and its cache, the
lead replica's log follower."""
