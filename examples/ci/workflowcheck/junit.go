package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// junitSuite is a JUnit <testsuite>; nested suites are allowed.
type junitSuite struct {
	Name   string       `xml:"name,attr"`
	Suites []junitSuite `xml:"testsuite"`
	Cases  []struct {
		Name    string    `xml:"name,attr"`
		Failure *struct{} `xml:"failure"`
		Error   *struct{} `xml:"error"`
		Skipped *struct{} `xml:"skipped"`
	} `xml:"testcase"`
}

// junitCounts is what a JUnit report holds.
type junitCounts struct{ total, failed, skipped int }

func (c *junitCounts) add(s junitSuite) {
	for _, tc := range s.Cases {
		c.total++
		switch {
		case tc.Failure != nil || tc.Error != nil:
			c.failed++
		case tc.Skipped != nil:
			c.skipped++
		}
	}
	for _, sub := range s.Suites {
		c.add(sub)
	}
}

// parseJUnit reads a JUnit XML file as the reporters CI systems use read it:
// a <testsuites> or a <testsuite> root, and at least one test case.
func parseJUnit(path string) (junitCounts, error) {
	var c junitCounts
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	var root struct {
		XMLName xml.Name
		junitSuite
	}
	if err := xml.Unmarshal(data, &root); err != nil {
		return c, fmt.Errorf("%s does not parse as XML: %w", path, err)
	}
	if n := root.XMLName.Local; n != "testsuites" && n != "testsuite" {
		return c, fmt.Errorf("%s: root element <%s>, not <testsuites> or <testsuite>", path, n)
	}
	c.add(root.junitSuite)
	if c.total == 0 {
		return c, fmt.Errorf("%s holds no test case", path)
	}
	return c, nil
}

// junitReport checks that every report mikepenz/action-junit-report would
// read parses as JUnit and says what it would publish.
func (r *runner) junitReport(with map[string]string) (int, map[string]string, error) {
	var files []string
	for _, p := range strings.FieldsFunc(orDefault(with["report_paths"], "**/junit-reports/TEST-*.xml"), func(c rune) bool { return c == '\n' || c == ',' }) {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if strings.Contains(p, "**") {
			return 0, nil, fmt.Errorf("mikepenz/action-junit-report: report_paths %s: ** is not emulated", p)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(r.ws, p)
		}
		m, err := filepath.Glob(p)
		if err != nil {
			return 0, nil, err
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		if with["require_tests"] == "true" {
			fmt.Println("   junit report: no report found, and require_tests is set")
			return 1, nil, nil
		}
		fmt.Println("   ::warning::junit report: no report found")
		return 0, nil, nil
	}
	var total junitCounts
	for _, f := range files {
		c, err := parseJUnit(f)
		if err != nil {
			return 0, nil, errors.New("mikepenz/action-junit-report: " + err.Error())
		}
		fmt.Printf("   JUnit %s: %d test cases, %d failed, %d skipped\n", filepath.Base(f), c.total, c.failed, c.skipped)
		total.total += c.total
		total.failed += c.failed
		total.skipped += c.skipped
	}
	if with["annotate_only"] == "true" {
		fmt.Println("   published as annotations (annotate_only): no check run")
	} else {
		fmt.Printf("   published as the check run %q (needs permissions checks: write)\n", orDefault(with["check_name"], "JUnit Test Report"))
	}
	if with["fail_on_failure"] == "true" && total.failed > 0 {
		return 1, nil, nil
	}
	return 0, map[string]string{
		"total": fmt.Sprint(total.total), "failed": fmt.Sprint(total.failed), "skipped": fmt.Sprint(total.skipped),
		"passed": fmt.Sprint(total.total - total.failed - total.skipped),
	}, nil
}
