module flamewatch/tests/targets/replay

go 1.22
