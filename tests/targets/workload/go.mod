module flamewatch/tests/targets/workload

go 1.22
