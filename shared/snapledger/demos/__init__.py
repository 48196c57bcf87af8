"""The demos: scripts over everything a workstation has, run by ``make demo`` (``lifecycle``),
``make demo-restate`` (``restate``) and ``make demo-kafka`` (``kafka_streams``); their report
(``report``), the session the lifecycle's steps share (``session``) and its restore steps
(``restore``). The top of the package's layers: nothing of snapledger imports them."""
