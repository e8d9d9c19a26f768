package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	splathost "github.com/splathost/splathost/sdk/go"
)

// integrationKeys are the integration's keys, for the commands an integrator runs (upload,
// analytics): flags, else SPLATHOST_PUBLIC_KEY and SPLATHOST_SECRET_KEY.
type integrationKeys struct{ public, secret string }

func (k *integrationKeys) addFlags(f *pflag.FlagSet) {
	f.StringVar(&k.public, "public-key", "", "integration public key, mpk_… (env SPLATHOST_PUBLIC_KEY)")
	f.StringVar(&k.secret, "secret-key", "", "integration secret key, msk_… (env SPLATHOST_SECRET_KEY)")
}

// integrationSDK is an SDK client with the integration's keys.
func (a *app) integrationSDK(k integrationKeys, what string) (*splathost.Client, error) {
	pick := func(v, env string) string {
		if v == "" {
			return os.Getenv(env)
		}
		return v
	}
	k.public, k.secret = pick(k.public, "SPLATHOST_PUBLIC_KEY"), pick(k.secret, "SPLATHOST_SECRET_KEY")
	if k.public == "" || k.secret == "" {
		return nil, fmt.Errorf("%s needs the integration's keys: --public-key and --secret-key (or SPLATHOST_PUBLIC_KEY, SPLATHOST_SECRET_KEY)", what)
	}
	return a.sdk(splathost.WithKeys(k.public, k.secret))
}

// analyticsCommand prints a scene's views per day (contract item 16) as a small terminal chart,
// or the answer itself with --json.
func (a *app) analyticsCommand() *cobra.Command {
	var keys integrationKeys
	var customer string
	var window int
	cmd := &cobra.Command{
		Use:   "analytics <splatId> [--customer EU]",
		Short: "Chart a scene's impressions and unique viewers per day (integrator keys)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.integrationSDK(keys, "analytics")
			if err != nil {
				return err
			}
			an, err := c.SplatAnalytics(cmd.Context(), customer, args[0], window)
			if err != nil {
				return err
			}
			if a.json {
				return a.print(an, nil)
			}
			return chartAnalytics(a.stdout, an)
		},
	}
	f := cmd.Flags()
	keys.addFlags(f)
	f.StringVar(&customer, "customer", "", "read as this external user (default: the integration, which sees every scene)")
	f.IntVar(&window, "window", 30, "days, 1-90, today included")
	return cmd
}

// sparkTicks are the eight heights of a sparkline cell, lowest first.
var sparkTicks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws one cell per value, scaled to the largest (all lowest when every value is 0).
func sparkline(values []int64) string {
	var top int64
	for _, v := range values {
		top = max(top, v)
	}
	var b strings.Builder
	for _, v := range values {
		i := 0
		if top > 0 && v > 0 {
			// A day with any view is never drawn as an empty one.
			i = max(1, int(v*int64(len(sparkTicks)-1)/top))
		}
		b.WriteRune(sparkTicks[i])
	}
	return b.String()
}

// chartAnalytics writes the window's totals, one sparkline per measure (a cell per day, oldest
// left) with its busiest day, and the dates under the ends of the lines.
func chartAnalytics(w io.Writer, an *splathost.Analytics) error {
	impressions := make([]int64, len(an.Days))
	unique := make([]int64, len(an.Days))
	for i, d := range an.Days {
		impressions[i], unique[i] = d.Impressions, d.UniqueViews
	}
	busiest := func(v []int64) string {
		best := -1
		for i := range v {
			if v[i] > 0 && (best < 0 || v[i] >= v[best]) {
				best = i
			}
		}
		if best < 0 {
			return "no views"
		}
		return fmt.Sprintf("max %d on %s", v[best], an.Days[best].Date)
	}
	fmt.Fprintf(w, "splat %s, last %d days (since %s)\n", an.SplatID, an.WindowDays, an.Since)
	fmt.Fprintf(w, "impressions  %8d  %s  %s\n", an.Totals.Impressions, sparkline(impressions), busiest(impressions))
	fmt.Fprintf(w, "unique       %8d  %s  %s\n", an.Totals.UniqueViews, sparkline(unique), busiest(unique))
	if n := len(an.Days); n > 0 {
		first, last := an.Days[0].Date, an.Days[n-1].Date
		pad := max(1, n-len(first)-len(last))
		if n < len(first)+len(last)+1 {
			_, err := fmt.Fprintf(w, "%23s%s … %s\n", "", first, last)
			return err
		}
		_, err := fmt.Fprintf(w, "%23s%s%s%s\n", "", first, strings.Repeat(" ", pad), last)
		return err
	}
	return nil
}
