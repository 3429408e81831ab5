module flamewatch/tests/targets/leaky

go 1.22
