"""Test support for anything that runs against the local cluster: the pytest plugin with the cluster fixtures
(:mod:`.plugin`, registered through the ``pytest11`` entry point, so installing this distribution gives every
test tree the same fixtures), waiting without fixed sleeps (:mod:`.waiting`) and small job builders for the
controller's own tests (:mod:`.jobs`)."""
