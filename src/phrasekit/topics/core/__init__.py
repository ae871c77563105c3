"""The steps every topic method and exploration verb shares: the term vocabulary and verbatim
matching (``terms``), parameter checks (``params``), placing documents by distance
(``placement``), reading terms per group (``reading``), the label rule (``labels``), choosing K
(``choose_k``) and the student that places documents (``student``)."""
