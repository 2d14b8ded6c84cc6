package discord

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Command is an application command (a slash command) as registered.
type Command struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Type        int             `json:"type"`
	Options     []CommandOption `json:"options,omitempty"`
	// Contexts are where the command shows: 0 guilds, 1 the bot's DMs.
	Contexts []int `json:"contexts"`
	// IntegrationTypes are the installs it comes with: 0 a guild's.
	IntegrationTypes []int `json:"integration_types"`
}

// CommandOption is an option of a command.
type CommandOption struct {
	Type        int    `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required,omitempty"`
	MaxLength   int    `json:"max_length,omitempty"`
}

// Commands are the channel's slash commands: /ask with its text, and
// /reset, /stop and /help, which the engine answers as it answers them
// typed.
func Commands() []Command {
	cmd := func(name, desc string, opts ...CommandOption) Command {
		return Command{Name: name, Description: desc, Type: 1, Options: opts, Contexts: []int{0, 1}, IntegrationTypes: []int{0}}
	}
	return []Command{
		cmd("ask", "Ask the agent", CommandOption{Type: 3, Name: "text", Description: "What to ask", Required: true, MaxLength: 6000}),
		cmd("reset", "Start a new conversation"),
		cmd("stop", "Stop the agent's current turn"),
		cmd("help", "What the agent understands"),
	}
}

// RegisterCommands makes Commands the application's global commands,
// replacing any others (PUT /applications/{id}/commands, idempotent).
func (c *Client) RegisterCommands(ctx context.Context) ([]Command, error) {
	var out []Command
	err := c.do(ctx, http.MethodPut, "bulk overwrite global application commands", "/applications/"+c.app+"/commands", true, Commands(), &out)
	return out, err
}

// InvitePermissions are the permissions the bot asks for in a guild:
// View Channels, Send Messages, Read Message History and Send Messages
// in Threads.
const InvitePermissions = 1<<10 | 1<<11 | 1<<16 | 1<<38

// InviteURL is the address that adds the application's bot, with its
// slash commands, to a guild.
func InviteURL(appID string) string {
	return "https://discord.com/oauth2/authorize?client_id=" + url.QueryEscape(appID) +
		"&scope=bot+applications.commands&permissions=" + strconv.Itoa(InvitePermissions)
}

// Commands returns the application's global commands.
func (c *Client) Commands(ctx context.Context) ([]Command, error) {
	var out []Command
	err := c.do(ctx, http.MethodGet, "get global application commands", "/applications/"+c.app+"/commands", true, nil, &out)
	return out, err
}
