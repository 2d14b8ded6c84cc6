package config

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Discord configures the Discord channel (shared/channels/discord).
type Discord struct {
	Enabled bool `yaml:"enabled"`
	// BotToken is the bot's token (Bot page of the Developer Portal).
	BotToken Secret `yaml:"bot_token"`
	// ApplicationID and PublicKey (hex) are on the application's General
	// Information page; the Interactions endpoint needs the public key,
	// and is not served without it.
	ApplicationID string `yaml:"application_id"`
	PublicKey     string `yaml:"public_key"`
	// Gateway receives plain messages (DMs, mentions) over the Gateway
	// WebSocket; default true.
	Gateway *bool `yaml:"gateway"`
	// Agent answers the bot (default "default"); Autonomy of its runs
	// (default supervised).
	Agent    string `yaml:"agent"`
	Autonomy string `yaml:"autonomy"`
	// AllowedUsers are the Discord user ids that may use the bot.
	AllowedUsers []string `yaml:"allowed_users"`
	// AccessCodes each let one more user in, once.
	AccessCodes []Secret `yaml:"access_codes"`
	// Groups says when the bot answers in server channels.
	Groups Groups `yaml:"groups"`
	// APIBase is DISCORD_API_BASE, a replacement of Discord's API
	// (tests).
	APIBase string `yaml:"-"`
}

// UseGateway reports whether the Gateway is on.
func (d *Discord) UseGateway() bool { return d.Gateway == nil || *d.Gateway }

// resolve reads the section's secrets.
func (d *Discord) resolve(home string, getenv func(string) string) error {
	if err := d.BotToken.resolve(home, getenv); err != nil {
		return fmt.Errorf("config: channels.discord.bot_token: %w", err)
	}
	for i := range d.AccessCodes {
		if err := d.AccessCodes[i].resolve(home, getenv); err != nil {
			return fmt.Errorf("config: channels.discord.access_codes: %w", err)
		}
	}
	d.APIBase = getenv("DISCORD_API_BASE")
	return nil
}

// validate checks the section; defaults are filled in only when the
// channel is enabled.
func (d *Discord) validate() error {
	if !d.Enabled {
		return nil
	}
	if d.Agent == "" {
		d.Agent = DefaultAgent
	}
	if d.Autonomy == "" {
		d.Autonomy = "supervised"
	}
	if _, err := tool.ParseAutonomy(d.Autonomy); err != nil {
		return fmt.Errorf("config: channels.discord.autonomy: %w", err)
	}
	if err := d.Groups.validate("channels.discord"); err != nil {
		return err
	}
	if !d.BotToken.Set() {
		return fmt.Errorf("config: channels.discord is enabled but has no bot_token (a reference such as {env: DISCORD_BOT_TOKEN})")
	}
	if d.BotToken.Value() == "" {
		return fmt.Errorf("config: channels.discord.bot_token: %s is empty", d.BotToken.Source())
	}
	if !snowflake(d.ApplicationID) {
		return fmt.Errorf("config: channels.discord.application_id %q is not an application id (the number on the application's General Information page)", d.ApplicationID)
	}
	if b, err := hex.DecodeString(d.PublicKey); d.PublicKey != "" && (err != nil || len(b) != 32) {
		return fmt.Errorf("config: channels.discord.public_key must be the 64 hex digits of the application's Public Key")
	}
	if d.PublicKey == "" && !d.UseGateway() {
		return fmt.Errorf("config: channels.discord needs public_key (for the Interactions endpoint) or the gateway")
	}
	for _, u := range d.AllowedUsers {
		if !snowflake(u) {
			return fmt.Errorf("config: channels.discord.allowed_users: %q is not a Discord user id", u)
		}
	}
	for _, c := range d.AccessCodes {
		if v := c.Value(); v != "" && len(v) < 8 {
			return fmt.Errorf("config: channels.discord.access_codes: the code in %s is shorter than 8 characters", c.Source())
		}
	}
	return nil
}

// snowflake reports whether s is a Discord id.
func snowflake(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil && s != "0"
}
