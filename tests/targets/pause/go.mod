module flamewatch/tests/targets/pause

go 1.22
