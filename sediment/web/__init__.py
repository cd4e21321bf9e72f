"""The page: ``sediment view``, a local read-only page where a person watches
and inspects what the agent remembers (extra ``[view]``).

* ``shape`` — what the page shows, as JSON-ready dicts, from public verbs;
* ``nebula`` — the graph of every memory, kept current, and its changes;
* ``live`` — the watcher's changes applied to the nebula and pushed to pages;
* ``server`` — the HTTP side (starlette): the token, GET only, the routes;
* ``export`` — the same page as static files with the data inlined;
* ``run`` — what the ``sediment view`` command does.

Everything here reads through ``Repository``'s public verbs and records no
recall: looking is not using (DESIGN, "The page").
"""
