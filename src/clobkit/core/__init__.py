"""The core both twins stand on (private): the compiled core ``_core_c`` or the
pure twin ``pure``, chosen by ``select``; every rule of the API in ``spec``;
parsing and checks of values (``parse``, ``checks``, ``jsondepth``), amounts
(``amounts_pure``), wallets (``wallet``), the shared types and enums, columns
and Arrow helpers for batches, safe local files, and optional extras.

Nothing here is public: ``clobkit``, ``clobkit.amounts``, ``clobkit.order_id``,
``clobkit.auth``, ``clobkit.salt`` and ``clobkit.signing`` export what users call.
"""
