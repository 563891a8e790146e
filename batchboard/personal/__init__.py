"""
What each user keeps for themselves: saved views of the lists and a time zone.

Both are batchboard's own state (:mod:`batchboard.state`), kept in the site's
database. :mod:`.lists` says which pages may be saved and what of their
address is kept; :mod:`.zones` reads and applies the time zone.
"""
