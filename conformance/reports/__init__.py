"""HTML reports: one self-contained file per counterexample (``timeline``), the campaign page
(``campaign``) and the gate page (``gate_page``), all on one shell (``page``)."""
