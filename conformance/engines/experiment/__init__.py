"""Experiments: the model's predictions checked on a real cluster (``spec`` the files, ``prediction``
the model's verdict per variant, ``drivers`` the clusters, ``plan`` the steering, ``outcome`` what
clients saw, ``engine`` the repetitions and the agreement)."""
