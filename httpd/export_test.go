package httpd_test

import "github.com/comb-broker/comb/httpd"

type httpdConfig = httpd.Config
