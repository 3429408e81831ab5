module flamewatch/tests/targets/regress

go 1.22
