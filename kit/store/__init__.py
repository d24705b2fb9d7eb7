"""The campaign store, below ``kit.analysis``: one campaign directory on disk (``store``),
its ``campaign.json`` (``meta``), damaged-file repair (``repair``), the resume checks
(``resume``) and a campaign opened once by the command that writes it (``opened``). A
campaign has one door for reading, :func:`kit.store.store.load_campaign`, and one for
writing, :func:`kit.store.opened.open_to_write` (it holds the campaign's lock). The loop
and the session (``kit.campaign``) are above it."""
