"""The campaign store, below ``kit.analysis``: one campaign directory on disk (``store``),
its ``campaign.json`` (``meta``), damaged-file repair (``repair``), the resume checks
(``resume``) and a campaign opened once by the command that writes it (``opened``). The loop
and the session (``kit.campaign``) are above it."""
